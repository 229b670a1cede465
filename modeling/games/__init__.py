"""Games the modeling core compiles to flat arrays."""
