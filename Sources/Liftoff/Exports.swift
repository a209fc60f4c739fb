// The clock types and the profile's vocabulary are part of the runtime's API: an app that
// imports Liftoff uses `ManualClock`, `Profile.RuleName` and the rest without a second import.
@_exported import LiftoffProfile
@_exported import LiftoffSampler
