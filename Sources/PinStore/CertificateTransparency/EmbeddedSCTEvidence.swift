/// What a certificate's embedded SCTs prove, with the leaf's validity period: CT policies count
/// the verified SCTs against a number that depends on the certificate's lifetime.
struct EmbeddedSCTEvidence: Sendable {
    /// One check per embedded SCT, in certificate order; empty when the leaf embeds none.
    let checks: [SCTCheck]
    /// The leaf's notBefore, in Unix seconds.
    let leafNotBefore: Int64
    /// The leaf's notAfter, in Unix seconds.
    let leafNotAfter: Int64
}
