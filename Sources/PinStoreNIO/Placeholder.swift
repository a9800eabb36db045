// Placeholder until the adapters land.
enum PinStoreNIOPlaceholder {}
