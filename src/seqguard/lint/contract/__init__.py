"""The engine model: can a read see a None mirror, is a host pull the per-step sync?

Four layers, each importing only those below it (NullAway's shape: one dataflow, and a
separate handler per question):

1. `point.EngineAtPoint`: what holds at a point of the code (its path's conditions and
   modes, types, nullability, capture and sync-allowed regions, copies, forced
   features, backends' flags), over `types`, `nullability`, `conditions`, `modes`. No
   callers, no verdicts: this is what a preset parameterises (`model_names` checks its
   names against the project).
2. `sites.CallSites`: where a function is called, with each call's path facts. A pure
   index (`word_files` names the files a name's callers can be in).
3. `fixpoint.Fixpoint.why_safe(function, question)`: every call of a function answers a
   question (`fixpoint.Question`), as a greatest fixpoint over the calls, bounded in
   depth and steps; the answer is a reason tree (`reasons.Reason`).
4. The questions, one per contract, beside the rules that ask them: `lint.questions`.

`model.Contract` holds the three layers for one run, and the one instance of each
question asked of them (`ctx.ask(MirrorPresent)`)."""
