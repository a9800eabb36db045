// snippet.hide
// The article "Transport security minimums" (PinStore). Compiled by `swift build`, never run.
import Foundation
import PinStore

let listURL = URL(string: "https://pins.example.net/list.json")!
let listKey = "BC3kV9OIDnMu...Nv+XE="
let plistData = Data()
// snippet.show
var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: listKey)
configuration.transportSecurityExceptions = [
    TransportSecurityException(domain: "legacy.example.com", minimumTLSVersion: .tlsv11),
    TransportSecurityException(domain: "partner.example.net", includesSubdomains: true, requiresForwardSecrecy: false),
]
// or from the app's Info.plist (NSAppTransportSecurity.NSExceptionDomains):
configuration.transportSecurityExceptions = try PinPolicyImport.transportSecurityExceptions(infoPlist: plistData)
