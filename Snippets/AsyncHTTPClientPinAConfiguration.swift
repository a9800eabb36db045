// snippet.hide
// The article "Pinning AsyncHTTPClient in a server": pinning a configuration the app builds.
// Compiled by `swift build`, never run.
import AsyncHTTPClient
import Foundation
import NIOPosix
import NIOSSL
import PinStore
import PinStoreAsyncHTTPClient

let store = try PinStore(configuration: .init(
    serviceURL: URL(string: "https://pins.example.net/list.json")!, publicKey: "BC3kV9OIDnMu...Nv+XE="))
let partnerCA = try NIOSSLCertificate.fromPEMFile("/etc/partner/ca.pem")
// snippet.show
var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(5)))
configuration.tlsConfiguration = .makeClientConfiguration()
configuration.tlsConfiguration?.trustRoots = .certificates(partnerCA)
try configuration.pin(with: store, eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
