"""Figure kinds beyond convergence curves (objective space, scatter, box plots, tables)."""
