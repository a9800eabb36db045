import ArgumentParser
import Foundation
import PinStore

/// `pinstore verify`: checks a list as apps will, entry by entry.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a static list or a challenge-mode response against a public key.",
        discussion: """
            Prints each entry with its status (valid, expired, bad signature) and exits with
            status 1 if any entry is not valid, if the list holds no entry, or if apps would
            refuse the list. In static mode every entry carries its own signature; with
            --challenge and --signature the file is a challenge-mode response body and the
            X-Cert-Pinning-Signature value covers challenge & body.

            --public-key takes the Base64 X9.63 point apps configure, a PEM or Base64 DER
            SubjectPublicKeyInfo, or a file holding one of those. --now evaluates expiry as of
            another time (Unix seconds or ISO 8601), e.g. to check an archived list.

            Examples:
              pinstore verify list.json --public-key BC3kV9OIDnMu...Nv+XE=
              pinstore verify list.json --public-key list-signing.pub.pem --now 1704067200
              pinstore verify body.json --public-key key.b64 --challenge AAECAwQFBgcICQoLDA0ODw== --signature MEUCIQ...
            """
    )

    @Argument(help: "The list file (static list, or challenge-mode response body).")
    var list: String

    @Option(help: "The public key apps configure, inline or as a file.")
    var publicKey: String

    @Option(help: "Challenge mode: the X-Cert-Pinning-Challenge value the response answers.")
    var challenge: String?

    @Option(help: "Challenge mode: the X-Cert-Pinning-Signature value of the response.")
    var signature: String?

    @Option(help: "Evaluate expiry as of this time (Unix seconds or ISO 8601; default: now).")
    var now: String?

    func validate() throws {
        if (challenge == nil) != (signature == nil) {
            throw ValidationError("--challenge and --signature go together (challenge mode).")
        }
    }

    func run() async throws {
        let body = try InputFiles.data(list, what: "list file")
        let key = try InputFiles.publicKey(publicKey)
        let asOf = try now.map { try UnixTime.parse($0, option: "--now") } ?? Int64(Date().timeIntervalSince1970)
        let date = Date(timeIntervalSince1970: TimeInterval(asOf))

        var rows: [(status: String, entry: FingerprintEntry)] = []
        var libraryVerdict: String?
        if let challenge, let signature {
            let parsed: FingerprintListSigner.ReadBackList
            do {
                parsed = try FingerprintListSigner.verifyChallengeResponse(body, challenge: challenge, signatureHeader: signature, publicKey: key)
            } catch {
                throw CLIError("\(list): refused", error)
            }
            Console.print("\(list): challenge-mode response, signature valid for challenge \(challenge)")
            if let timestamp = parsed.timestamp {
                Console.print("timestamp: \(UnixTime.iso8601(timestamp)) (\(timestamp))")
            }
            rows = parsed.entries.map { ($0.entry.isValid(at: date) ? "valid" : "expired", $0.entry) }
        } else {
            let parsed: FingerprintListSigner.ReadBackList
            do {
                parsed = try FingerprintListSigner.readBack(body)
            } catch {
                throw CLIError("\(list): not a fingerprint list apps accept", error)
            }
            Console.print("\(list): static list, \(parsed.entries.count) entr\(parsed.entries.count == 1 ? "y" : "ies")")
            do {
                if let timestamp = try FingerprintListSigner.wholeListSignatureTimestamp(body, publicKey: key) {
                    Console.print("whole-list signature: valid, timestamp \(UnixTime.iso8601(timestamp)) (\(timestamp))")
                } else {
                    Console.print("whole-list signature: none (replay, splicing and depth changes cannot be detected; stores with requireListSignature refuse this list)")
                }
            } catch {
                Console.print("whole-list signature: INVALID")
                libraryVerdict = error.reason
            }
            rows = parsed.entries.map { signed in
                let status: String
                if !FingerprintListSigner.entrySignatureIsValid(signed.signature, for: signed.entry, publicKey: key) {
                    status = signed.signature == nil ? "no signature" : "bad signature"
                } else {
                    status = signed.entry.isValid(at: date) ? "valid" : "expired"
                }
                return (status, signed.entry)
            }
            do {
                _ = try FingerprintList.verifiedEntries(staticList: body, publicKey: key)
            } catch {
                libraryVerdict = error.reason
            }
        }
        printTable(rows, asOf: asOf)
        let failures = rows.filter { $0.status != "valid" }.count
        if let libraryVerdict {
            Console.printError("apps would refuse this list: \(libraryVerdict)")
        }
        if rows.isEmpty {
            Console.printError("the list holds no entry: apps would report storeIsEmpty")
            throw ExitCode.failure
        }
        if failures > 0 {
            Console.printError("\(failures) of \(rows.count) entr\(rows.count == 1 ? "y is" : "ies are") not valid as of \(UnixTime.iso8601(asOf))")
            throw ExitCode.failure
        }
        if libraryVerdict != nil {
            throw ExitCode.failure
        }
        Console.print("all \(rows.count) entr\(rows.count == 1 ? "y" : "ies") valid as of \(UnixTime.iso8601(asOf))")
    }

    private func printTable(_ rows: [(status: String, entry: FingerprintEntry)], asOf: Int64) {
        let nameWidth = max(4, rows.map(\.entry.name.count).max() ?? 0)
        func pad(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(0, width - text.count))
        }
        Console.print("\(pad("STATUS", 13))  \(pad("NAME", nameWidth))  \(pad("EXPIRES", 33))  FINGERPRINT")
        for row in rows {
            var expires = "\(UnixTime.iso8601(row.entry.expires)) (\(row.entry.expires))"
            if row.entry.depth != 0 { expires += " d\(row.entry.depth)" }
            Console.print("\(pad(row.status, 13))  \(pad(row.entry.name, nameWidth))  \(pad(expires, 33))  \(row.entry.fingerprint.base64EncodedString())")
        }
    }
}
