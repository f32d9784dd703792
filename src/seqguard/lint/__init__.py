"""seqguard lint: per-file facts (`facts`, the analyzer in `analysis/`), the project hierarchy (`index`),
rules (`rules/`), and the runner that ties them to files (`runner`). No torch here."""
