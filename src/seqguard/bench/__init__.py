"""The demo engine behind `seqguard bench`: a request pool, a token-slot KV cache, a
tiny decoder with random weights whose attention runs through the runtime's Triton
backends, a spec-v2 style draft/verify cycle, and an overlapped scheduler that relays
lengths through FutureMap.

Built on `seqguard.runtime`'s public API only (names it exports, `seqguard.runtime.ops`
and `seqguard.runtime.fallback`), as an engine would be; nothing in the runtime imports
this package.
"""
