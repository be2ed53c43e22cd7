"""Built-in plugins: ordinary solarserv plugins, registered like third-party ones."""
