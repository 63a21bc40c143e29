"""Seed compatibility: torch_npu's and torchair's Python API on superkernel,
so a torchair script runs on a CPU by changing only its imports
(docs/python.md lists the lines):

    from superkernel.compat import torch_npu, torchair
"""
