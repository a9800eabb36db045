// snippet.hide
// The article "What the pinned client checks" (PinStoreAsyncHTTPClient): pinning a
// configuration built elsewhere. Compiled by `swift build`, never run.
import AsyncHTTPClient
import Foundation
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
let partnerCA = try NIOSSLCertificate.fromPEMFile("/etc/partner/ca.pem")
// snippet.show
var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5)))
configuration.tlsConfiguration = .makeClientConfiguration()
configuration.tlsConfiguration?.trustRoots = .certificates(partnerCA)     // a private CA (optional)
try configuration.pin(with: store)           // throws if certificateVerification is not .fullVerification
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)   // Linux
