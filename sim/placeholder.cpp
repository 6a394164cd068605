// Placeholder until the sim sources land.
