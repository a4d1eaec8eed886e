"""What a user sees: HTML, table rows and plotly figures (`render`), 2-D / 3-D projections (`projection`)."""
