"""Codemods apply a rule's fix in bulk. Each reports its result as a value
(changed / unchanged / skipped with a reason), never by crashing the run."""
