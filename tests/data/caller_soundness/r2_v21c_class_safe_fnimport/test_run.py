from eng.other import make_plain
from eng.split import FB

make_plain().run(FB())
