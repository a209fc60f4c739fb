// A program that renders reports also reads profiles, computes their views and compares runs:
// one import brings the layers below the renderers.
@_exported import LiftoffAnalysis
@_exported import LiftoffComparison
