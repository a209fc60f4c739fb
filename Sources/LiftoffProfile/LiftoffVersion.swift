/// The version of Liftoff, written into every profile.
public enum LiftoffVersion {
    /// The version string, `major.minor.patch`.
    public static let current = "0.1.0"
}
