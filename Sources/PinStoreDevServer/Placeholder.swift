// Placeholder until the dev server lands.
enum PinStoreDevServerPlaceholder {}
