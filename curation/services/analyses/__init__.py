"""Curating BLADE analyses (the analyses kind's own services): the stage-2 review queue of its decisions
(variables and transforms), the LLM's alternatives to them, and the experts' coverage of its decision space.

The shared services (votes, alternatives, the ground truth, meetings) know no kind; these modules know BLADE's.
"""
