"""The backend base (`base`) and the Triton backends (`triton_backend`, which imports
triton). Import the names from `seqguard.runtime`, whose one lazy loader keeps triton
out until a Triton backend is asked for."""
