import Foundation

/// Certificate Transparency for tools (`pinstore ct`, `pinstore verify`) and tests: a section
/// and a chain's CT status judged exactly as a store judges them (``EmbeddedSCTs``,
/// ``CTCompliance``). Making a section from a log list is the signing side's
/// (`CertificateTransparencyTools+Conversion.swift` in PinStoreSigning); it reads its result
/// back through ``checked(_:)``.
package enum CertificateTransparencyTools {
    /// Checks a log list's detached signature (`log_list.sig`) with `signerKey` (a
    /// SubjectPublicKeyInfo DER, P-256 or RSA) when both are given; neither is fine, one alone
    /// is refused.
    package static func checkLogListSignature(_ json: Data, signature: Data?, signerKey: Data?) throws(PinStoreError) {
        if signature != nil, signerKey == nil {
            throw PinStoreError(.invalidListData, "The log list's signature was given without the key that signed it; give both, or neither.")
        }
        if let signerKey {
            guard let signature else {
                throw PinStoreError(.invalidListData, "A log list signer key was given without the list's signature (log_list.sig).")
            }
            let key = try CTLogKey(spki: signerKey)
            guard key.verify(signature: signature, over: json) else {
                throw PinStoreError(.invalidListSignature, "The log list's signature does not verify with the given key; was it downloaded whole, with its own log_list.sig?")
            }
        }
    }

    /// `wire` read back as a store reads it (ids recomputed, keys parsed, hosts checked), then
    /// encoded compactly with sorted keys: the bytes a list carries.
    package static func checked(_ wire: CTLogList.Wire) throws(PinStoreError) -> Data {
        _ = try CTLogList(wire)
        return try encode(wire)
    }

    /// A public key file's SubjectPublicKeyInfo: the DER itself, or the DER of a PEM
    /// `PUBLIC KEY` block (decoded by OpenSSL).
    package static func subjectPublicKeyInfo(fromFile data: Data) throws(PinStoreError) -> Data {
        guard let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN") else { return data }
        guard let der = PEMDocument.firstBlock(in: text, label: "PUBLIC KEY") else {
            throw PinStoreError(.invalidPEM, "No intact -----BEGIN PUBLIC KEY----- block was found.")
        }
        return der
    }

    /// Checks a section file (the JSON a list carries) as a store would, returning it compacted.
    package static func checkedSection(_ json: Data) throws(PinStoreError) -> Data {
        let wire: CTLogList.Wire
        do {
            wire = try JSONDecoder().decode(CTLogList.Wire.self, from: json)
        } catch {
            throw PinStoreError(.invalidListData, "The certificateTransparency section is not in the expected shape: \(error)")
        }
        return try checked(wire)
    }

    /// What the section of a list says, for `pinstore verify`: the log list's timestamp and
    /// the number of logs; nil without a section.
    package static func summary(ofList body: Data) throws(PinStoreError) -> (timestamp: Int64, logs: Int, profile: String?)? {
        guard let wire = try FingerprintListDocument(body: body).certificateTransparency else { return nil }
        let list = try CTLogList(wire)
        return (list.timestamp, list.logs.count, list.profile?.rawValue)
    }

    /// One line per SCT of `chain`'s leaf (DER, leaf first, the issuer next), and the verdict
    /// of `profile` (or the section's) at `now`: what a store would decide for a host in
    /// enforce mode.
    package static func status(chain: [Data], section: Data, profile: CertificateTransparencyProfile? = nil,
                               now: Date = Date()) throws(PinStoreError) -> (lines: [String], compliant: Bool) {
        let list = try CTLogList(try JSONDecoder().decodeSection(section))
        guard chain.count >= 2 else {
            throw PinStoreError(.noCertificate, "The chain has no issuer certificate after the leaf; the SCTs are signed over the issuer's key. Give the leaf and its issuer.")
        }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let evidence: EmbeddedSCTEvidence
        do {
            evidence = try EmbeddedSCTs.check(leaf: chain[0], issuer: chain[1], logKey: { list.logs[$0]?.key },
                                              nowMilliseconds: UInt64(clamping: seconds) &* 1000)
        } catch {
            return (["the leaf's SCT list cannot be read: \(error)"], false)
        }
        var lines: [String] = []
        for check in evidence.checks {
            let id = check.sct.logID.base64EncodedString()
            let log = Digest32(check.sct.logID).flatMap { list.logs[$0] }
            let at = UnixTime.iso8601Milliseconds(check.sct.timestamp)
            lines.append("SCT from \(id) (\(log.map { "\($0.operatorName), \($0.kind.rawValue), \($0.state.name)" } ?? "not in the list")) at \(at): \(check.status)")
        }
        if evidence.checks.isEmpty { lines.append("the leaf carries no embedded SCTs") }
        if list.isStale(at: seconds) {
            lines.append("note: the log list is \((seconds - list.timestamp) / 86_400) days old; stores fail open past 70 days")
        }
        let judged = profile ?? list.profile ?? .chrome
        if let violation = CTCompliance.violation(of: judged, evidence: evidence, logs: list, now: seconds) {
            lines.append("\(judged.rawValue) profile: NOT compliant: \(violation)")
            return (lines, false)
        }
        lines.append("\(judged.rawValue) profile: compliant")
        return (lines, true)
    }

    private static func encode(_ wire: CTLogList.Wire) throws(PinStoreError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(wire)
        } catch {
            throw PinStoreError(.invalidListData, "The section could not be encoded: \(error)")
        }
    }

}

private extension JSONDecoder {
    func decodeSection(_ data: Data) throws(PinStoreError) -> CTLogList.Wire {
        do {
            return try decode(CTLogList.Wire.self, from: data)
        } catch {
            throw PinStoreError(.invalidListData, "The certificateTransparency section is not in the expected shape: \(error)")
        }
    }
}

private enum UnixTime {
    static func iso8601Milliseconds(_ milliseconds: UInt64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
