import Foundation
import Testing
import PinStoreTesting
@testable import PinStorePublisher

@Suite struct PublicationFileTests {
    static let base = URL(fileURLWithPath: "/tmp")
    static let minimal = #"{"signingKeys": [{"file": "k.pem"}], "outputFolder": "o", "stateFolder": "s""#

    @Test func anUnknownKeyIsRefusedWithItsPath() {
        let json = Data((Self.minimal + #", "partners": [{"host": "a"}, {"host": "b"}, {"host": "c", "sni2": "x"}]}"#).utf8)
        let error = #expect(throws: PublisherError.self) { try PublicationFile(json: json, baseDirectory: Self.base) }
        #expect(error?.code == .unknownKey)
        #expect(error?.reason.hasPrefix("partners[2].sni2 ") == true)
    }

    @Test func aPrivateKeyInlineIsRefused() {
        let json = Data(#"{"signingKeys": [{"file": "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----"}], "outputFolder": "o", "stateFolder": "s"}"#.utf8)
        let error = #expect(throws: PublisherError.self) { try PublicationFile(json: json, baseDirectory: Self.base) }
        #expect(error?.code == .inlineKeyMaterial)
    }

    @Test func aKeyNamedLikeKeyMaterialIsRefusedAsSuch() {
        let json = Data(#"{"signingKeys": [{"privateKey": "MHcCAQEE"}], "outputFolder": "o", "stateFolder": "s"}"#.utf8)
        let error = #expect(throws: PublisherError.self) { try PublicationFile(json: json, baseDirectory: Self.base) }
        #expect(error?.code == .inlineKeyMaterial)
    }

    @Test func durationsAcceptSecondsAndUnits() throws {
        let json = Data((Self.minimal + #", "probeInterval": 90, "gracePeriod": "45d", "minimumSpan": "2h", "expires": "10m", "resignInterval": "5m"}"#).utf8)
        let file = try PublicationFile(json: json, baseDirectory: Self.base)
        #expect(file.probeInterval.seconds == 90)
        #expect(file.gracePeriod.seconds == 45 * 86_400)
        #expect(file.minimumSpan.seconds == 7_200)
        #expect(file.expires.seconds == 600)
    }

    @Test func aDurationWithAnUnknownUnitIsRefused() {
        let json = Data((Self.minimal + #", "gracePeriod": "2w"}"#).utf8)
        let error = #expect(throws: PublisherError.self) { try PublicationFile(json: json, baseDirectory: Self.base) }
        #expect(error?.code == .invalidPublicationFile)
        #expect(error?.reason.contains("gracePeriod") == true)
    }

    @Test func defaultsAreTheDocumentedOnes() throws {
        let file = try PublicationFile(json: Data((Self.minimal + #", "partners": [{"host": "a.example"}]}"#).utf8), baseDirectory: Self.base)
        #expect(file.partners[0].pin == .leafCertificate)
        #expect(file.partners[0].port == 443)
        #expect(file.minimumSightings == 3)
        #expect(file.threshold == 1)
        #expect(file.expires.seconds == 7 * 86_400)
        #expect(file.resignInterval.seconds == 86_400)
    }

    @Test func aResignIntervalNotBelowExpiresIsRefused() {
        let json = Data((Self.minimal + #", "expires": "1d", "resignInterval": "1d"}"#).utf8)
        let error = #expect(throws: PublisherError.self) { try PublicationFile(json: json, baseDirectory: Self.base) }
        #expect(error?.reason.contains("resignInterval") == true)
    }
}
