"""Zeroth-order solvers for MERO (paper 001)."""
