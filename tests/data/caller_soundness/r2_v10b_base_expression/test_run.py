from m import FB, Attn

Attn()(FB())
