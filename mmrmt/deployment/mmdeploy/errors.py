"""The error of mmrmt's mmdeploy rewriters: an export that would not compute what torch does."""


class InexactExportError(ValueError):
    """A layer that the deploy config's settings would export as other numbers than torch computes."""
