import pandas as pd
df = pd.read_csv('data.csv')
out = df.groupby('lncoins', as_index=False)['mdvis'].mean().rename(columns={'mdvis': 'mean_mdvis'})
out.sort_values('lncoins').to_csv('visits_by_coinsurance.csv', index=False)
