"""The project index by job: modules, hierarchy, calls (`lint.index.ProjectIndex` joins them)."""
