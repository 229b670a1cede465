"""Suite-wide settings: hypothesis without per-example deadlines.

CI and developers share 2-core machines that are often busy; a wall-clock deadline per example
turns load into flaky failures without testing anything about the code.
"""

from hypothesis import settings

settings.register_profile("oppmodel", deadline=None)
settings.load_profile("oppmodel")
