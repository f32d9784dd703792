"""seqguard lint: per-file facts (`facts`, `matchers`), the project hierarchy (`index`),
rules (`rules/`), and the runner that ties them to files (`runner`). No torch here."""
