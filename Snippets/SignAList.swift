// snippet.hide
// README.md, "Signing lists from Swift". Compiled by `swift build`, never run.
import Foundation

let keyPEM = "-----BEGIN EC PRIVATE KEY-----\n...\n-----END EC PRIVATE KEY-----\n"
let partnerLeafPEM = "-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n"
// snippet.show
import PinStore
import PinStoreSigning

let signer = FingerprintListSigner(privateKey: try P256PrivateKey(pem: keyPEM))   // or additionalKeys: for a key set
let leaf = try X509Certificate.certificates(pem: partnerLeafPEM)[0]   // the partner's certificate
let entry = FingerprintEntry(name: "api.partner.example", fingerprint: leaf.fingerprint,
                             expires: Int64(leaf.notAfter.timeIntervalSince1970))
let list = try signer.staticList([entry], timestamp: Int64(Date().timeIntervalSince1970), version: 8)
