"""drocli.figures: Figures from records: the plotting engine and one module per figure kind."""
