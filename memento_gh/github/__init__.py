"""The GitHub side: webhook events, issue texts and the dashboard, and the API adapter."""
