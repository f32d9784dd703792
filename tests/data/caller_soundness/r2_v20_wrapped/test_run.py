from m import FB, uncached

uncached(FB())
