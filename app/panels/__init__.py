"""Dockable panels of the main window."""
