"""Exact evaluation: expected values, best responses, nash_conv, deviation gains."""
