"""seqguard: keep the optional host mirror of sequence lengths honest.

`seqguard.lint` and `seqguard.codemods` never import torch; `seqguard.runtime` does.
"""

__version__ = "0.1.0"
