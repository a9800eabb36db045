// snippet.hide
// The PinStoreSigning module overview. Compiled by `swift build`, never run.
// snippet.show
import Foundation
import PinStore
import PinStoreSigning

// snippet.hide
func signList(keyFile: URL, partnerCertificatePEM: String, outputFile: URL) throws {
// The shown lines inside this function are not indented, so that they line up with the
// imports above them in the article.
// snippet.show
let key = try P256PrivateKey(pem: String(decoding: try Data(contentsOf: keyFile), as: UTF8.self))
guard let leaf = try X509Certificate.certificates(pem: partnerCertificatePEM).first else { return }
let entry = FingerprintEntry(name: "api.partner.example", fingerprint: leaf.fingerprint,
                             expires: Int64(leaf.notAfter.timeIntervalSince1970))
let list = try FingerprintListSigner(privateKey: key)
    .staticList([entry], timestamp: Int64(Date().timeIntervalSince1970), version: 8)
try list.write(to: outputFile, options: .atomic)
// snippet.hide
}
