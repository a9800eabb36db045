/// The version of this library: the release tag it is (or will be) published under, as the
/// README's install line names it and CHANGELOG.md's newest release heading says. Sent in
/// pin-failure reports (`pinstore-version`).
///
/// The commit that prepares a release sets ``current`` and the CHANGELOG heading together (a
/// test checks that they agree); the promise a version makes is in the README, "Versions and
/// API stability".
public enum PinStoreVersion {
    /// The version string, `MAJOR.MINOR.PATCH` (semantic versioning), e.g. `"0.1.0"`.
    public static let current = "0.1.0"
}
