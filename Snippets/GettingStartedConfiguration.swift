// snippet.hide
// The article "Getting started" (PinStore), "The whole configuration, as a server sets it".
// Compiled by `swift build`, never run.
import Foundation
import Logging
import PinStore

let logger = Logger(label: "my-server")
let teamKeyBase64 = "BC3kV9OIDnMu...Nv+XE="
// snippet.show
var configuration = PinStore.Configuration(
    serviceURL: URL(string: "https://pins.example.net/list.json")!,   // or URL(fileURLWithPath:) (<doc:ListFromAFile>)
    publicKey: teamKeyBase64,                  // `pinstore public-key list-signing.key.pem --format base64`
    expectedCommonNames: ["api.partner.example"],   // nothing else can ever validate
    identifier: "payments",                     // names the store file: one per store
    storageDirectory: URL(fileURLWithPath: "/var/lib/my-server/pinstore"),   // 0700, the server's user
    requireListSignature: true)                 // refuse lists without the whole-list signature
configuration.keyDocumentURL = URL(string: "https://pins.example.net/keys.json")!   // key rotation
configuration.expiredListPolicy = .refusePins   // the default: a list past `expires` pins nothing
configuration.refusalUpdateInterval = 60        // at most one refusal-triggered download a minute
configuration.reportURI = URL(string: "https://pins.example.net/reports")!   // pin-failure reports

let store = try PinStore(configuration: configuration, logger: logger)
