// The term both forms of units_add.comp share, in its own file as engines keep helpers.
float add_terms(float x, float r) { return x + r; }
