// Intentionally empty: a translation unit for backend libraries under construction.
