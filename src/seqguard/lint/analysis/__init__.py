"""The analyzer lint and codemod share: where a host mirror is read, whether a None
guard covers the read, and what each class declares. No reporting and no file I/O
here, so the codemod rewrites exactly the sites lint reports.

- `names`: keys for expressions (`b.seq_lens_cpu`), dotted names of bases and callees;
- `guards`: None-narrowing (tests, early exits, local booleans, rebinding);
- `usage`: what counts as a read, and device lengths pulled to the host;
- `classes`: flag declarations in every form, the import table, top-level names;
- `walk`: the one pass over a module that ties them together (`ModuleAnalysis`), and
  `parameter_uses` for reads through calls;
- `source`: source text as Python reads it (decoding, line breaks), which the
  renderers read too. The package imports none of its modules, so showing a finding's
  source line loads no analyzer (0.19 s of imports a warm run does without).
"""
