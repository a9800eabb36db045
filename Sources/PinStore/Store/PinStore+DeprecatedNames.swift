import Foundation

// The names 0.1.0 replaced, kept so that code written against them compiles with a warning and a
// fix-it (`renamed:`) rather than an error. Each forwards to the new name and nothing else.

extension PinStore {
    /// Renamed ``matchPins(commonName:fingerprint:)``: it matches pins and evaluates no trust.
    @available(*, deprecated, renamed: "matchPins(commonName:fingerprint:)",
               message: "matches pins only and runs no trust evaluation; renamed matchPins(commonName:fingerprint:)")
    public func validate(commonName: String, fingerprint: Data) -> ValidationResult {
        matchPins(commonName: commonName, fingerprint: fingerprint)
    }

    /// Renamed ``matchPins(commonName:publicKeySHA256:)``: it matches pins and evaluates no trust.
    @available(*, deprecated, renamed: "matchPins(commonName:publicKeySHA256:)",
               message: "matches pins only and runs no trust evaluation; renamed matchPins(commonName:publicKeySHA256:)")
    public func validate(commonName: String, publicKeySHA256: Data) -> ValidationResult {
        matchPins(commonName: commonName, publicKeySHA256: publicKeySHA256)
    }

    /// Renamed ``matchPins(commonName:certificateData:)``: it matches pins and evaluates no trust.
    @available(*, deprecated, renamed: "matchPins(commonName:certificateData:)",
               message: "matches pins only and runs no trust evaluation; renamed matchPins(commonName:certificateData:)")
    public func validate(commonName: String, certificateData: Data) -> ValidationResult {
        matchPins(commonName: commonName, certificateData: certificateData)
    }

    /// Renamed ``matchPins(commonName:certificateChain:)``: it matches pins and evaluates no
    /// trust, so a pinned leaf for another host or past its dates answers `.trusted`.
    @available(*, deprecated, renamed: "matchPins(commonName:certificateChain:)",
               message: "matches pins only and runs no trust evaluation (a pinned leaf for another host or past its dates is .trusted); renamed matchPins(commonName:certificateChain:)")
    public func validate(commonName: String, certificateChain: [Data]) -> ValidationResult {
        matchPins(commonName: commonName, certificateChain: certificateChain)
    }
}
