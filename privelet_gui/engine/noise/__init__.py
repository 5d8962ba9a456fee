"""Drawing the noise safely: the grid and its calibration, the two samplers, the random bits
(docs/math.md, "The grid", "The exact sampler", "The standard sampler", "Random bits")."""
