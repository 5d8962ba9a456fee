"""Qt building blocks shared by the desktop app and the command line's figures.

Icons, small widgets, the pyqtgraph charts and their headless PNG export. The app
(:mod:`privelet_gui.gui`) builds its windows from these; ``privelet evaluate`` draws
its figures with :mod:`privelet_gui.qt.figures` without importing the app. Nothing
here holds application state.
"""
