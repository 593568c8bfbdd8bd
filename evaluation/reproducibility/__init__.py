"""The reproducibility facet (AIRepr, evaluation-seeds-reference §3): can an inspector model, given only the
question, the data dictionary, the file names and an analysis's workflow, write code that reaches the same
statistics and conclusion as the analysis's own code?

Modules: :mod:`.models` (items, the four outcomes, the result file), :mod:`.items` (which submissions qualify),
:mod:`.script_job` (both codes in the sandbox), :mod:`.inspector` (the inspector's three calls and the accuracy
judge), :mod:`.summary` (rates with bootstrap CIs, overrides), :mod:`.airepr` (AIRepr's published files). This
package stays light at import time: the sandbox's template process imports :mod:`.script_job` before it forks.
"""
