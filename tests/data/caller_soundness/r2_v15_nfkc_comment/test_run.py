from m import FB
from n import step

step(FB())
