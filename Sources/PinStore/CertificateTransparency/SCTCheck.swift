/// One SCT of a certificate with the verdict on it, so a policy can count by log and a report can
/// say which SCT failed and why.
struct SCTCheck: Sendable, Equatable {
    /// The SCT as read from the certificate.
    let sct: SignedCertificateTimestamp
    /// Whether it verified, and if not, why.
    let status: SCTStatus
}
