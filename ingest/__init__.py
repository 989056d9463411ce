"""Source readers and the loader that turn KG dumps into a populated graph store."""
