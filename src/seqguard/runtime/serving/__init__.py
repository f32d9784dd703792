"""A small but real serving loop: request pool, token-slot KV cache, a tiny decoder
with random weights whose attention runs through the Triton backends, a spec-v2 style
draft/verify cycle, and an overlapped scheduler that relays lengths through FutureMap."""
