import Foundation
import PinStore
import PinStoreSigning

// Issue 20: verifying a 1,000-entry static list signed by a 2-of-3 key set costs about two
// signature checks more than the same list signed by one key (not two list verifications):
// the per-entry signatures are checked once, with the one key that made them, and each further
// whole-list signature adds one check.

/// A static list of `entries` with per-entry signatures by `keys[0]` and whole-list signatures
/// by every key (the wire rules of the README's "Key documents and list expiry", written out
/// here: the benchmark package sees only the public API).
func keySetListJSON(_ entries: [FingerprintEntry], keys: [P256PrivateKey]) throws -> Data {
    var lines: [String] = []
    for entry in entries {
        let signature = try keys[0].signature(for: entry.signedBytes).base64EncodedString()
        lines.append(#"{"name": "\#(entry.name)", "fingerprint": "\#(entry.fingerprint.base64EncodedString())", "expires": \#(entry.expires), "signature": "\#(signature)"}"#)
    }
    let tail = ",\n  \"version\": 1,\n  \"timestamp\": 1893456000,\n  \"fingerprints\": [\n    " + lines.joined(separator: ",\n    ") + "\n  ]\n}\n"
    var labelled: [String] = []
    let emptied = "{\n  \"listSignature\": \"\"" + (keys.count > 1 ? ",\n  \"listSignatures\": []" : "") + tail
    for key in keys.dropFirst() {
        let keyID = SHA256Digest.hash(try key.publicKey.x963Representation).map { String(format: "%02x", $0) }.joined()
        let signature = try key.signature(for: Data(emptied.utf8)).base64EncodedString()
        labelled.append(#"{"keyid": "\#(keyID)", "signature": "\#(signature)"}"#)
    }
    let unsigned = "{\n  \"listSignature\": \"\"" + (keys.count > 1 ? ",\n  \"listSignatures\": [" + labelled.joined(separator: ", ") + "]" : "") + tail
    let first = try keys[0].signature(for: Data(unsigned.utf8)).base64EncodedString()
    return Data(unsigned.replacingOccurrences(of: "{\n  \"listSignature\": \"\"", with: "{\n  \"listSignature\": \"\(first)\"").utf8)
}

/// One key versus a 2-of-3 key set on the same 1,000 entries, and OpenSSL's single verify as
/// the unit the difference is counted in.
func keySetBenchmarkRows() throws -> [Row] {
    let keys = try (0..<3).map { _ in try P256PrivateKey() }
    let publicKeys = try keys.map { try $0.publicKey }
    let entries = makeEntries(1_000)
    let oneKeyBody = try keySetListJSON(entries, keys: [keys[0]])
    let twoKeyBody = try keySetListJSON(entries, keys: [keys[0], keys[1]])
    guard (try? FingerprintList.verifiedEntries(staticList: twoKeyBody, publicKeys: publicKeys, threshold: 2))?.count == 1_000,
          (try? FingerprintList.verifiedEntries(staticList: oneKeyBody, publicKeys: [publicKeys[0]], threshold: 1))?.count == 1_000 else {
        throw BenchmarkError("the key set benchmark lists do not verify")
    }
    let message = entries[0].signedBytes
    let signature = try keys[0].signature(for: message)
    let single = Harness.nanosecondsPerOperation(operations: 1_000, samples: 9) {
        for _ in 0..<1_000 { Harness.consume(publicKeys[0].isValidSignature(signature, for: message)) }
    }
    // The two lists verify alternately, pair by pair, so that both see the same load (the
    // machine may be shared): the difference is the median of the per-pair differences.
    func verifyOneKey() { Harness.consume(try? FingerprintList.verifiedEntries(staticList: oneKeyBody, publicKeys: [publicKeys[0]], threshold: 1)) }
    func verifyTwoOfThree() { Harness.consume(try? FingerprintList.verifiedEntries(staticList: twoKeyBody, publicKeys: publicKeys, threshold: 2)) }
    verifyOneKey()
    verifyTwoOfThree()
    let clock = ContinuousClock()
    func nanoseconds(_ body: () -> Void) -> Double {
        let elapsed = clock.measure(body)
        return Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    }
    var ones: [Double] = []
    var twos: [Double] = []
    var differences: [Double] = []
    for pair in 0..<61 {
        // Alternate which one goes first, so neither always runs on a warmer cache.
        let (one, two) = pair % 2 == 0 ? (nanoseconds(verifyOneKey), nanoseconds(verifyTwoOfThree))
                                         : { let two = nanoseconds(verifyTwoOfThree); return (nanoseconds(verifyOneKey), two) }()
        ones.append(one)
        twos.append(two)
        differences.append(two - one)
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let oneKey = median(ones)
    let twoOfThree = median(twos)
    let difference = median(differences)
    let extraChecks = difference / single
    let cores = ProcessInfo.processInfo.activeProcessorCount
    return [
        Row(name: "verify 1,000-entry list, 2-of-3 key set (\(cores) cores)", value: Harness.format(twoOfThree),
            baseline: "one key \(Harness.format(oneKey))", ratio: String(format: "%.3fx", (oneKey + difference) / oneKey),
            target: "<= 1.05x", met: (oneKey + difference) / oneKey <= 1.05),
        Row(name: "  median paired difference, in single signature checks", value: String(format: "%.1f checks", extraChecks),
            baseline: "one check \(Harness.format(single))", ratio: "-",
            target: "about 2 (not 1,000)", met: extraChecks < 20),
    ]
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
