import pandas as pd
df = pd.read_csv('data.csv').drop_duplicates()
df['any_affair'] = (df['affairs'] > 0).astype(int)
df.to_csv('cleaned.csv', index=False)
