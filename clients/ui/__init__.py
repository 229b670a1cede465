"""``oppmodel ui``: a live web page per session, read from a running service through its RPCs
(docs/ui.md): ``reader`` makes the calls with the browser user's own token, ``charts`` draws the
SVG, ``pages`` writes the HTML, ``app`` serves it."""
