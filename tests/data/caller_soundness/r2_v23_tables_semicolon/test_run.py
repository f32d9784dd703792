from m import FB, step

step(FB())
