"""Where and how the engine computes: `device` (CPU, CUDA or MPS, one setting), `hardware` (threads,
precision, int8 products), `distributed` (torchrun) and `cancel` (work that stops when its request does)."""
